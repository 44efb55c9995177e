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


async def test_every_page_the_server_writes_keeps_to_one_set_of_headers(api: Api) -> None:
    """The not-found page, an email link's page and a sign-in's end are framed by no other
    site, never sniffed, kept by no cache and send no referrer; only the link's page lets its
    form post (to this server)."""
    pages = {
        "not found": await api.client.get("/nowhere", headers=BROWSER),
        "link": await api.client.get("/links/not-a-token", headers=BROWSER),
        "sign-in": await api.client.get("/api/oauth/callback?state=made-up", headers=BROWSER),
    }
    for name, page in pages.items():
        assert page.headers["content-type"].startswith("text/html"), name
        assert page.headers["cache-control"] == "no-store", name
        assert page.headers["referrer-policy"] == "no-referrer", name
        assert page.headers["x-content-type-options"] == "nosniff", name
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy, name
        assert "frame-ancestors 'none'" in policy, name
        assert ("form-action 'self'" in policy) == (name == "link"), name
    assert pages["link"].status_code == 404
    assert "This link is not valid" in pages["link"].text
    assert pages["sign-in"].status_code == 400
