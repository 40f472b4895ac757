"""The logical match-expression pipeline: parse, annotate, normalise, and expand into OpenFlow matches."""
