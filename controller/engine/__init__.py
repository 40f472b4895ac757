"""The incremental-processing engine: the node machinery, the graph declared as data, and the agent state with its leaf nodes."""
