"""A folder of wheels scanned into values, cached by stat."""
