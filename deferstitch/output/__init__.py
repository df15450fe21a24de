"""Writers: one module per output. Each takes stitched samples and passed-through records."""
