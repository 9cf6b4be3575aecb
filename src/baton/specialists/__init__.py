"""Specialist agents: SQL over databases, SQL over DataFrames, knowledge retrieval."""
