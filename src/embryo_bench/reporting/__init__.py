"""Reading runs back and reporting: flags, paired comparisons, tables, merging other machines'
runs, figures."""
