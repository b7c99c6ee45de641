"""Pictures drawn with matplotlib (the plot extra): the one outside system here."""
