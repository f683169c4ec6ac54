"""Runs kept in experiment trackers (MLflow, TensorBoard, W&B offline folders, Ray Tune folders), read
through each tracker's own reader and turned into ``collect import`` rows with their provenance."""
