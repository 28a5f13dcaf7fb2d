"""The drill's front ends: `labkit drill` in a terminal (`terminal`, `text`) and the SVG charts
of the notebook drill (`svg`).
"""
