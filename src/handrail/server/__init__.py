"""handrail's HTTP API: a FastAPI app over the runtime and the store.

    from handrail.server import create_app, load_config

    app = create_app(load_config("handrail.yaml"))

``handrail serve --config handrail.yaml`` runs it with uvicorn.
"""

from .app import create_app
from .config import ServerConfig, UserConfig, load_config

__all__ = ["ServerConfig", "UserConfig", "create_app", "load_config"]
