"""What the agent is shown: wake, recall, their entries, token counts and rendering."""
