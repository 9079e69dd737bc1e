"""Model Context Protocol servers: their tools, resources and prompts, behind the trust boundary."""
