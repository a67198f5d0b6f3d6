"""The MCP server: gitmem's tools over the Model Context Protocol (a surface over the facade)."""
