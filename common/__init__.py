"""Building blocks shared by every app: the label vocabulary, file readers and the settings schema."""
