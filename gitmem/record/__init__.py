"""The memory record and its pure rules: the model, ids, anchors, limits, relations, decay.

No I/O and no YAML here: everything above builds on these.
"""
