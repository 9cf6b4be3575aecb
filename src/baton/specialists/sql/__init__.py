"""The SQL specialist: safe-by-construction, validated, self-repairing SQL over real databases."""
