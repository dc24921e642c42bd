"""The web app over the whole toolkit (``tabverify serve``): pages and an HTTP JSON API that are thin
skins over the library, with the work of each request in worker processes under a time limit.

Needs the ``web`` extra (``pip install 'tabverify[web]'``): FastAPI, uvicorn, Jinja2, python-multipart
and pebble.
"""

from tabverify.server.app import create_app
from tabverify.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
