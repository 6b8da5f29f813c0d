from django.apps import AppConfig


class EvaluationsConfig(AppConfig):
    name = "evaluations"

    def ready(self) -> None:
        # Register the tasks in every process (web, commands, workers): services.enqueue finds them
        # by name in the Celery app's registry instead of importing this module back.
        from evaluations import tasks  # noqa: F401
