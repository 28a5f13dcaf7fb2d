"""labkit and the processes it runs in and starts: `children` (the ranks labkit starts, owned
and ended on every way out) and `torch_state` (the learner's process, as labkit found it)."""
