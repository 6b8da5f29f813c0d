"""The dataset pages: list, upload (admins only) and detail."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.models import Dataset, DatasetVersion
from tests.datasets.conftest import assert_nothing_stored, item, jsonl

UPLOAD_URL = reverse("datasets:upload")


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("ann", role="admin"))
    return client


@pytest.fixture
def viewer_client(client, make_user):
    client.force_login(make_user("vic", role="viewer"))
    return client


def upload(client, content: bytes, *, name: str = "stip", filename: str = "stip.jsonl", fmt: str = ""):
    data = {"name": name, "file": SimpleUploadedFile(filename, content), "format": fmt}
    return client.post(UPLOAD_URL, data)


# --- list ----------------------------------------------------------------------


def test_the_list_needs_a_login(client, db) -> None:
    response = client.get(reverse("datasets:list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_list_shows_each_dataset_with_its_latest_version(viewer_client, import_bytes) -> None:
    import_bytes(jsonl(item(1)), name="alpha")
    import_bytes(jsonl(item(1), item(2), item(3)), name="alpha")
    import_bytes(jsonl(item(1)), name="beta")
    Dataset.objects.create(name="gamma")

    response = viewer_client.get(reverse("datasets:list"))

    rows = {dataset.name: dataset for dataset in response.context["datasets"]}
    assert (rows["alpha"].latest_number, rows["alpha"].latest_item_count) == (2, 3)
    assert (rows["beta"].latest_number, rows["beta"].latest_item_count) == (1, 1)
    assert (rows["gamma"].latest_number, rows["gamma"].updated_at) == (None, None)
    assert rows["alpha"].updated_at == DatasetVersion.objects.get(dataset__name="alpha", number=2).created_at
    html = response.content.decode()
    assert f'href="{reverse("datasets:detail", args=[rows["alpha"].pk])}"' in html
    assert "Upload a dataset" not in html  # viewers cannot upload


@pytest.mark.parametrize("dataset_count", [1, 5])
def test_the_list_query_count_does_not_grow_with_datasets(
    viewer_client, import_bytes, django_assert_num_queries, dataset_count: int
) -> None:
    for number in range(dataset_count):
        import_bytes(jsonl(item(number)), name=f"set-{number}")
        import_bytes(jsonl(item(number), item(number + 100)), name=f"set-{number}")
    # session, user, user's groups (role), datasets with their latest version
    with django_assert_num_queries(4):
        response = viewer_client.get(reverse("datasets:list"))
    assert response.status_code == 200
    assert response.content.decode().count("<tr>") == dataset_count + 1


def test_admins_see_the_upload_link(admin_client) -> None:
    assert "Upload a dataset" in admin_client.get(reverse("datasets:list")).content.decode()


# --- upload --------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "reviewer"])
def test_non_admins_may_not_open_the_upload_page(client, make_user, role: str) -> None:
    client.force_login(make_user("someone", role=role))
    assert client.get(UPLOAD_URL).status_code == 403


def test_non_admins_may_not_upload(viewer_client) -> None:
    response = upload(viewer_client, jsonl(item(1)))
    assert response.status_code == 403
    assert_nothing_stored()


def test_the_upload_page_prefills_the_name(admin_client) -> None:
    response = admin_client.get(UPLOAD_URL, {"name": "stip"})
    assert response.status_code == 200
    assert response.context["form"]["name"].value() == "stip"


def test_a_good_upload_redirects_to_the_new_version(admin_client) -> None:
    response = upload(admin_client, jsonl(item(1), item(2)))

    version = DatasetVersion.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("datasets:detail", args=[version.dataset_id]) + "?version=1"
    assert (version.dataset.name, version.item_count, version.created_by.username) == ("stip", 2, "ann")
    page = admin_client.get(response["Location"])
    assert "Imported version 1 with 2 items." in page.content.decode()


def test_a_large_upload_streamed_to_a_temporary_file_imports(admin_client, settings) -> None:
    # given uploads above this size are spooled to disk (TemporaryUploadedFile) instead of memory
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 100
    content = jsonl(*(item(n) for n in range(1, 40)))
    assert len(content) > 100
    response = upload(admin_client, content)
    assert response.status_code == 302
    assert DatasetVersion.objects.get().item_count == 39


def test_uploading_the_same_content_again_says_nothing_is_new(admin_client) -> None:
    upload(admin_client, jsonl(item(1)))
    response = upload(admin_client, jsonl(item(1)), filename="renamed.jsonl")
    assert DatasetVersion.objects.count() == 1
    page = admin_client.get(response["Location"])
    assert "Nothing new: version 1 already holds this content." in page.content.decode()


def test_the_format_field_overrides_the_extension(admin_client) -> None:
    response = upload(admin_client, json.dumps([item(1)]).encode(), filename="export.txt", fmt="json")
    assert response.status_code == 302
    assert DatasetVersion.objects.get().source_format == "json"


def test_upload_problems_are_listed_inline_and_nothing_is_stored(admin_client) -> None:
    content = jsonl(item(1), {"id": "q-2"}, item(3, tags=[1]))

    response = upload(admin_client, content)

    assert response.status_code == 200
    html = response.content.decode()
    assert "The file has 2 problems; nothing was imported." in html
    assert "<li>line 2, field &#x27;query&#x27;: is missing" in html
    assert "<li>line 3, field &#x27;tags&#x27;: must be a list of strings" in html
    assert response.context["form"]["name"].value() == "stip"
    assert_nothing_stored()


def test_an_upload_over_the_size_limit_is_refused_inline(admin_client, settings) -> None:
    settings.DATASET_MAX_UPLOAD_BYTES = 20
    response = upload(admin_client, jsonl(item(1)))
    assert response.status_code == 200
    assert "over the size limit of 20 bytes" in response.content.decode()
    assert_nothing_stored()


def test_an_upload_without_a_file_shows_the_form_error(admin_client) -> None:
    response = admin_client.post(UPLOAD_URL, {"name": "stip"})
    assert response.status_code == 200
    assert response.context["form"].errors == {"file": ["This field is required."]}
    assert_nothing_stored()


# --- detail --------------------------------------------------------------------


@pytest.fixture
def two_versions(import_bytes):
    import_bytes(jsonl(item(1, tags=["old"])), name="stip")
    many = [item(n, contexts=["a", "b", "c"], tags=["factual", f"t{n}"]) for n in range(1, 31)]
    return import_bytes(jsonl(*many), name="stip").version


def test_the_detail_shows_the_latest_version_a_page_at_a_time(viewer_client, two_versions) -> None:
    url = reverse("datasets:detail", args=[two_versions.dataset_id])

    first = viewer_client.get(url)
    second = viewer_client.get(url, {"page": 2})

    assert first.context["version"] == two_versions
    assert [e.external_id for e in first.context["page"]] == [f"q-{n}" for n in range(1, 26)]
    assert [e.external_id for e in second.context["page"]] == [f"q-{n}" for n in range(26, 31)]
    assert {e.context_count for e in first.context["page"]} == {3}
    html = first.content.decode()
    assert "Page 1 of 2" in html
    assert '<a href="?version=2&amp;page=2">Next →</a>' in html
    assert "<td>Question 7?</td>" in html
    assert "t7" in html
    assert [v.number for v in first.context["versions"]] == [2, 1]


def test_the_detail_shows_an_older_version_on_request(viewer_client, two_versions) -> None:
    response = viewer_client.get(reverse("datasets:detail", args=[two_versions.dataset_id]), {"version": 1})
    assert response.context["version"].number == 1
    assert [(e.external_id, e.tags, e.context_count) for e in response.context["page"]] == [("q-1", ["old"], 1)]
    assert "Page 1 of" not in response.content.decode()


@pytest.mark.parametrize("version", ["9", "x"])
def test_an_unknown_version_is_not_found(viewer_client, two_versions, version: str) -> None:
    response = viewer_client.get(reverse("datasets:detail", args=[two_versions.dataset_id]), {"version": version})
    assert response.status_code == 404


def test_long_responses_are_truncated(viewer_client, import_bytes) -> None:
    version = import_bytes(jsonl(item(1, response="word " * 100))).version
    html = viewer_client.get(reverse("datasets:detail", args=[version.dataset_id])).content.decode()
    assert "word " * 100 not in html
    assert "word word" in html and "…" in html


def test_a_dataset_without_versions(viewer_client, db) -> None:
    dataset = Dataset.objects.create(name="empty")
    response = viewer_client.get(reverse("datasets:detail", args=[dataset.pk]))
    assert response.status_code == 200
    assert "No versions yet." in response.content.decode()


def test_an_unknown_dataset_is_not_found(viewer_client) -> None:
    assert viewer_client.get(reverse("datasets:detail", args=[999999])).status_code == 404


# --- one example ---------------------------------------------------------------


def example_url(version, external_id: str) -> str:
    return reverse("datasets:example", args=[version.dataset_id, version.number, external_id])


@pytest.fixture
def rich_version(import_bytes):
    full = item(
        1,
        response="A long answer. " * 40 + "The end [c1].",
        contexts=[
            {"id": "c1", "text": "First context,\nsecond line.", "score": 0.92, "metadata": {"source": "wiki"}},
            {"id": "c2", "text": "<script>alert('c2')</script> Second context."},
        ],
        reference_answer="The reference.",
        expected_context_ids=["c2", "c9"],
        retrieved_ids=["c2", "c1"],
        tags=["factual", "long"],
        metadata={"author": "ann", "nested": {"k": [1, 2]}},
    )
    return import_bytes(jsonl(full, item(2), item(3, id="odd/id #3?")), name="stip").version


def test_an_example_page_shows_the_whole_example(viewer_client, rich_version) -> None:
    response = viewer_client.get(example_url(rich_version, "q-1"))

    assert response.status_code == 200
    html = response.content.decode()
    assert "A long answer. " * 40 + "The end [c1]." in html  # the full response, not truncated
    assert "Question 1?" in html and "The reference." in html
    assert "<code>c1</code>" in html and "score 0.92" in html and "First context,\nsecond line." in html
    assert "<code>c2</code>" in html and "score –" in html  # a context without a score
    assert "&quot;source&quot;: &quot;wiki&quot;" in html  # the context's metadata
    assert "<code>c9</code>" in html  # an expected id that was not retrieved
    assert html.index("<code>c2</code> <code>c1</code>") > 0  # retrieved ids in rank order
    assert '<span class="ds-tag">factual</span>' in html and '<span class="ds-tag">long</span>' in html
    assert "&quot;author&quot;: &quot;ann&quot;" in html and "&quot;k&quot;: [\n" in html
    assert f'rel="next" href="{example_url(rich_version, "q-2")}"' in html
    assert 'rel="prev"' not in html


def test_dataset_text_is_rendered_inert(viewer_client, rich_version) -> None:
    html = viewer_client.get(example_url(rich_version, "q-1")).content.decode()

    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;c2&#x27;)&lt;/script&gt;" in html


def test_without_retrieved_ids_the_contexts_order_is_shown(viewer_client, rich_version) -> None:
    html = viewer_client.get(example_url(rich_version, "q-2")).content.decode()

    assert "(not given: the contexts' order)" in html
    assert "No reference answer." in html and "No metadata." in html and "No tags." in html
    assert 'rel="prev"' in html and 'rel="next"' in html


def test_an_id_with_slashes_and_url_characters_has_its_own_page(viewer_client, rich_version) -> None:
    url = example_url(rich_version, "odd/id #3?")

    response = viewer_client.get(url)

    assert response.status_code == 200
    assert response.context["example"].external_id == "odd/id #3?"


def test_the_items_table_links_each_example_and_scrolls_in_its_own_box(viewer_client, rich_version) -> None:
    html = viewer_client.get(reverse("datasets:detail", args=[rich_version.dataset_id])).content.decode()

    for external_id in ("q-1", "q-2", "odd/id #3?"):
        assert f'href="{example_url(rich_version, external_id)}"' in html
    assert html.count('<div class="table-wrap table-scroll">') == 2  # versions and items


@pytest.mark.parametrize(("version_number", "external_id"), [(1, "nope"), (9, "q-1")])
def test_an_unknown_example_or_version_is_not_found(viewer_client, rich_version, version_number, external_id) -> None:
    url = reverse("datasets:example", args=[rich_version.dataset_id, version_number, external_id])
    assert viewer_client.get(url).status_code == 404


def test_an_example_of_another_dataset_is_not_found(viewer_client, rich_version, import_bytes) -> None:
    other = import_bytes(jsonl(item(7)), name="other").version
    assert viewer_client.get(example_url(other, "q-1")).status_code == 404


def test_the_example_page_needs_a_login(client, rich_version) -> None:
    response = client.get(example_url(rich_version, "q-1"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_example_page_costs_a_fixed_number_of_queries(viewer_client, rich_version, django_assert_num_queries):
    # session, user, the example with its version and dataset, the previous id, the next id
    with django_assert_num_queries(5):
        response = viewer_client.get(example_url(rich_version, "q-2"))
    assert response.status_code == 200
