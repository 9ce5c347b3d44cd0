"""What is done with a Wiki: ground, eval and tune, page writes, pull, status, serve's warm start."""
