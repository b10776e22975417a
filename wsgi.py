"""The WSGI entry point gunicorn serves: `gunicorn wsgi:app`."""
import gc

from app import create_app

app = create_app()
# What start-up built (the app, its schemas, mappers, statements) lives as long as the worker:
# out of the collector's full passes, which otherwise stall a request for ~0.1 s every few
# hundred on these machines.
gc.freeze()
