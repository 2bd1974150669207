"""Building blocks shared by every app: the label vocabulary, file readers, the settings schema and the
error a refused field raises."""
