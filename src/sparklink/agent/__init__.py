"""The broker-state agent: one per broker, beside it; reads the broker's state inside its JVM and serves it.

`sparklink agent` (cli/agent.py) runs `server.serve`; the roller's `agent_client` talks to it.
"""
