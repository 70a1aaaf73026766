"""Scores (Υ and its estimators) and the analysis tables of a sweep's dataset."""
