"""Models and distributions: numpy and TensorFlow twins, and the Policy the workers act with."""
