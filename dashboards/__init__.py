"""Publication figures and the self-contained HTML report of a sweep dataset."""
