from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from targets.models import Target
from targets.selectors import percentile, target_get
from targets.services import target_create, target_demo_ensure, target_update

pytestmark = pytest.mark.django_db


def test_create_and_find_by_id_or_name(make_target):
    target = make_target("http://127.0.0.1:9/query", name="rag")

    assert target_get("rag") == target_get(target.pk) == target_get(str(target.pk)) == target
    assert target_get("nope") is None


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"url": "ftp://x"}, "url", "is not an http"),
        ({"response_mapping": {}}, "response_mapping", "answer: is required"),
        ({"response_mapping": {"answer": "a..b"}}, "response_mapping", "not a valid JMESPath"),
        ({"request_template": {"q": "{{question}}"}}, "request_template", "unknown placeholder"),
        ({"headers": {"Authorization": {"env": "sk-live 123"}}}, "headers", "name\\* of the environment variable"),
        ({"headers": {"Authorization": "Bearer sk-123"}}, "headers", "read from the environment, never stored"),
        ({"headers": {"Authorization": {"env": "T", "format": "Bearer"}}}, "headers", "format must be a string with"),
        ({"timeout_seconds": 0}, "timeout_seconds", "more than 0"),
        ({"requests_per_minute": 0}, "requests_per_minute", "at least 1"),
        ({"method": "DELETE"}, "method", "not a valid choice"),
    ],
)
def test_validation_names_the_field(fields, field, message):
    values = {"name": "bad", "url": "http://127.0.0.1:9/query", "response_mapping": {"answer": "answer"}} | fields
    with pytest.raises(ValidationError) as caught:
        target_create(**values)
    assert field in caught.value.message_dict
    assert any(__import__("re").search(message, text) for text in caught.value.message_dict[field])
    assert not Target.objects.exists()


def test_a_duplicate_name_is_a_name_error(make_target):
    make_target("http://127.0.0.1:9/query", name="rag")
    with pytest.raises(ValidationError) as caught:
        make_target("http://127.0.0.1:9/query", name="rag")
    assert "already exists" in caught.value.message_dict["name"][0]


def test_update_validates_and_refuses_unknown_fields(make_target):
    target = make_target("http://127.0.0.1:9/query")
    target_update(target=target, url="http://127.0.0.1:8100/query", max_concurrency=2)
    target.refresh_from_db()
    assert (target.url, target.max_concurrency) == ("http://127.0.0.1:8100/query", 2)
    with pytest.raises(ValidationError) as caught:
        target_update(target=target, name="other")
    assert "name" in caught.value.message_dict
    with pytest.raises(ValidationError):
        target_update(target=target, response_mapping={"answer": ""})


def test_the_demo_target_is_created_once_and_follows_the_url():
    first = target_demo_ensure(url="http://127.0.0.1:8100/query")
    again = target_demo_ensure(url="http://127.0.0.1:8101/query")
    assert first.pk == again.pk and again.url == "http://127.0.0.1:8101/query"
    assert Target.objects.count() == 1


def test_percentile_is_nearest_rank():
    assert percentile([], 0.5) is None
    assert percentile([10, 20, 30], 0.5) == 20
    assert percentile(list(range(1, 101)), 0.95) == 95
