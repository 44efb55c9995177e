"""The demo: an agent with the notes tools, a plan picker and clarify, the scripted model's
playbook of plain-language prompts, and the app ``handrail demo`` runs.

    handrail demo                 # http://127.0.0.1:8000, users alice, bob and admin
"""

from .agent import PLAYBOOK, demo_agent
from .app import DEFAULT_DEMO_FOLDER, DEMO_USERS, create_demo_app, demo_config

__all__ = [
    "DEFAULT_DEMO_FOLDER",
    "DEMO_USERS",
    "PLAYBOOK",
    "create_demo_app",
    "demo_agent",
    "demo_config",
]
