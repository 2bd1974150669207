"""Code shared by the annotation and evaluation apps that belongs to neither (no Django imports)."""
