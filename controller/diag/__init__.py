"""What operators ask the agent: ovn-appctl commands, coverage counters, stopwatches, loop statistics, memory reports and the ctl client."""
