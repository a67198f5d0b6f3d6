"""Widgets of the browse screen: the filter bar, the memory table and the detail pane."""
