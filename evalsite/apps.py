from django.apps import AppConfig
from django.conf import settings


class EvalsiteConfig(AppConfig):
    name = "evalsite"
    verbose_name = "evalsite accounts"

    def ready(self) -> None:
        from evalsite.db import check_sqlite_version

        for database in settings.DATABASES.values():
            check_sqlite_version(database["ENGINE"])
