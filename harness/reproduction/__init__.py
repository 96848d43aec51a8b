"""The reproduction page: the methodology's tables re-derived from ragsweep's own results files.

The last stage: it reads what the sweep stage (comparison.json) and the bench stage
(metrics.json) wrote, puts each number beside the methodology's (transcribed, with the line
it is printed on, in ``methodology_tables.json``) and the difference, and gives every
difference over the threshold the sentence from ``explanations.json`` that says why, or
says plainly that there is none. Same inputs, same bytes: no time, host or duration.
"""
