"""Figures and tables made from results."""
