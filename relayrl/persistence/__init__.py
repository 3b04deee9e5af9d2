"""Persistence and export: checkpoints, SavedModel and TFLite exports, TensorBoard, run records."""
