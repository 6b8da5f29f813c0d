from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "api"
    verbose_name = "REST API"

    def ready(self) -> None:
        from api import receivers, schema_extensions  # noqa: F401  (signal receiver; OpenAPI token auth)
