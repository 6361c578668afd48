"""Detection measured on text annotated by people.

- :mod:`.corpus`: the annotated sources (TAB's court judgments, WNUT-17's comments), their
  dev / held-out split;
- :mod:`.tab_metrics`: TAB's evaluation (Pilán et al. 2022) of what a system masked;
- :mod:`.maskers`: what the product masks under a policy, and what vanilla Presidio masks;
- ``preflight_eval.eval_annotated``: the command that prints and writes the numbers.
"""
