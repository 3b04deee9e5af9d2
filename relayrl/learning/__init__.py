"""Learning: the Learner (one compiled update) and where it runs (devices, threads, strategy)."""
