"""Pure statistics on arrays: paired intervals, ratios, noninferiority, multiplicity, resolution."""
