"""`verify`'s reasoning, no Spark: which generation owns each window, what to read back."""
