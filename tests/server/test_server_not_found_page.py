"""A person who opens a page that does not exist reads an HTML page with the way back, never
the raw problem JSON (a bug: the browser showed `{"status":404,...}`); a client of the API
still gets problem JSON."""

from __future__ import annotations

from server_helpers import Api

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


async def test_a_browser_gets_a_page_for_an_unknown_path(api: Api) -> None:
    for path in ("/nowhere", "/c/not-an-id", "/static/missing.js", "/inbox/extra"):
        response = await api.client.get(path, headers=BROWSER)
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("text/html"), path
        assert "<h1>Page not found</h1>" in response.text
        assert '<a href="/">' in response.text
        assert '"status"' not in response.text


async def test_the_path_is_escaped_in_the_page(api: Api) -> None:
    response = await api.client.get("/<script>x</script>", headers=BROWSER)
    assert response.status_code == 404
    assert "<script>" not in response.text
    assert "&lt;script&gt;" in response.text


async def test_api_clients_and_api_paths_still_get_problem_json(api: Api) -> None:
    plain = await api.client.get("/nowhere")
    assert plain.status_code == 404
    assert plain.headers["content-type"] == "application/problem+json"
    assert plain.json()["title"] == "Not Found"
    under_api = await api.client.get("/api/nowhere", headers=BROWSER)
    assert under_api.headers["content-type"] == "application/problem+json"
    posted = await api.client.post("/nowhere", headers=BROWSER)
    assert posted.headers["content-type"] == "application/problem+json"
