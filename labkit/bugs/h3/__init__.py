"""H3 bugs: instrumentation. Training is fine; the number that is logged is not the loss."""
