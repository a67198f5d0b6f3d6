"""Reading memories written by other tools into gitmem records."""
