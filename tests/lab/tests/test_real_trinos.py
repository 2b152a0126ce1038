"""The lab's real Trinos: each the version lab.json says, on plain HTTP with insecure
authentication and on HTTPS with its own CA and the password file authenticator."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request

import pytest

from .. import realtrino, trinodist


def _reals(lab) -> list[dict]:
    reals = list((lab.get("trinos") or {}).values())
    assert reals, "lab.json lists no real Trino (trinos)"
    return reals


def _post(url: str, sql: str, headers: dict, ca_file: str | None = None):
    ctx = ssl.create_default_context(cafile=ca_file) if url.startswith("https") else None
    req = urllib.request.Request(url + "/v1/statement", data=sql.encode(), method="POST", headers=headers)
    return urllib.request.urlopen(req, timeout=30, context=ctx)


def _basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_each_real_trino_is_the_version_lab_json_names(lab):
    for t in _reals(lab):
        with urllib.request.urlopen(t["url"] + "/v1/info", timeout=10) as r:
            info = json.loads(r.read())
        assert info["nodeVersion"]["version"] == t["version"]
        assert t["version"] in trinodist.SERVERS
    assert lab["trino"]["url"] == _reals(lab)[0]["url"], "the first is the primary"
    assert lab["trino_tls"]["url"] == lab["trino"]["https_url"]


def test_https_takes_the_password_and_refuses_a_wrong_one(lab):
    for t in _reals(lab):
        with _post(t["https_url"], "SELECT 1", _basic(t["tls_user"], t["tls_password"]), t["ca_file"]) as r:
            assert r.status == 200 and json.loads(r.read())["id"]
        with pytest.raises(urllib.error.HTTPError) as e:
            _post(t["https_url"], "SELECT 1", _basic(t["tls_user"], "wrong"), t["ca_file"])
        assert e.value.code == 401
        assert b"Invalid credentials" in e.value.read()
        # another CA: the handshake fails
        with pytest.raises(urllib.error.URLError):
            _post(t["https_url"], "SELECT 1", _basic(t["tls_user"], t["tls_password"]),
                  lab["stand_in"]["ca_file"])


def test_plain_http_keeps_insecure_authentication(lab):
    for t in _reals(lab):
        page = realtrino.statement(t["url"], "SELECT 1", user="anyone")
        assert page.get("error") is None and page["rows"] == [[1]]
        with pytest.raises(urllib.error.HTTPError) as e:
            _post(t["url"], "SELECT 1", {})
        assert e.value.code == 401


def test_optimize_answers_by_release(lab):
    """481 changed optimize's answer from a `rows` column without a row to metric rows."""
    for t in _reals(lab):
        schema = f"lab_rt_{t['version']}"
        for sql in (f"CREATE SCHEMA IF NOT EXISTS iceberg.{schema}",
                    f"DROP TABLE IF EXISTS iceberg.{schema}.t",
                    f"CREATE TABLE iceberg.{schema}.t (id bigint)",
                    f"INSERT INTO iceberg.{schema}.t VALUES 1",
                    f"INSERT INTO iceberg.{schema}.t VALUES 2"):
            assert realtrino.statement(t["url"], sql, catalog="iceberg").get("error") is None, sql
        page = realtrino.statement(t["url"], f"ALTER TABLE iceberg.{schema}.t EXECUTE optimize", catalog="iceberg")
        assert page.get("error") is None, page["error"]
        names = [c["name"] for c in page["columns"]]
        if int(t["version"]) >= 481:
            assert names == ["metric_name", "metric_value"]
            assert dict(page["rows"])["rewritten_data_files_count"] == 2
        else:
            assert names == ["rows"] and page["rows"] == []


def test_an_unknown_version_is_refused_naming_the_ones_the_lab_runs():
    with pytest.raises(trinodist.TrinoSetupError) as e:
        trinodist.choose_jdk("446")
    assert "476" in str(e.value) and "483" in str(e.value)
    # each layout is keyed by its recipe: a new recipe never builds over an older layout
    assert trinodist.recipe_key("476") != trinodist.recipe_key("483")
    assert trinodist.server_dir(trinodist.Path("/c"), "483").name.startswith("server-")


def test_each_real_trino_is_laid_out_from_its_lock(lab):
    """What a server is made of is its lock file's pins, fetched and checked against their
    SHA-1: the jars of its `lib/` and of its Iceberg plugin are the pinned ones, and no other
    (but the two built here: the assembled server's main class and the plugin's services jar)."""
    for t in _reals(lab):
        version = t["version"]
        pins = trinodist.read_lock(version)
        server = trinodist.Path(t["server_dir"])
        assert server.name == f"server-{trinodist.recipe_key(version)}", "the layout of this lock"
        name = lambda p: trinodist.relative_path(p.coords).rsplit("/", 1)[1]  # noqa: E731
        plugin = {name(p) for p in pins if p.role == "plugin"}
        on_disk = {f.name for f in (server / "plugin" / "iceberg").glob("*.jar")}
        if trinodist.SERVERS[version][1] == "assembled":
            assert {f.name for f in (server / "lib").glob("*.jar")} == \
                {name(p) for p in pins if p.role == "lib"} | {f"floe-lab-trino-main-{version}.jar"}
            assert on_disk == plugin | {f"trino-iceberg-{version}-services.jar"}
        else:
            assert plugin <= on_disk, "sqlite-jdbc beside the release's Iceberg plugin"
        for p in pins:
            assert len(p.sha1) == 40 and p.size > 0


def test_a_lock_line_is_role_coordinates_sha1_and_size():
    for version in trinodist.SERVERS:
        pins = trinodist.read_lock(version)
        assert {p.role for p in pins} <= set(trinodist.ROLES)
        assert sum(p.role == "password" for p in pins) == 1
    with pytest.raises(trinodist.TrinoSetupError):
        trinodist.Pin("lib", "io.trino:trino-main:483", "0" * 40, 1)  # no type
    with pytest.raises(trinodist.TrinoSetupError):
        trinodist.Pin("lib", "io.trino:trino-main:483:jar", "not-a-sha1", 1)
    assert trinodist.relative_path("io.airlift:launcher:318:tar.gz:bin") == \
        "io/airlift/launcher/318/launcher-318-bin.tar.gz"


def test_the_delta_tables_are_served_from_the_object_store_by_the_release_that_has_the_plugin(lab):
    """476 (whose Delta Lake plugin the full release tarball brings) registers the delta
    scenario's tables from the lab's object store, each with the commits delta-rs wrote, and
    writes its own (a compaction between its loads, a DELETE through deletion vectors);
    483 has no such plugin."""
    reals = _reals(lab)
    for t in reals:
        server = trinodist.Path(t["server_dir"])
        assert (server / "plugin" / realtrino.DELTA_PLUGIN_DIR).is_dir() == bool(t.get("delta")), t["version"]
    served = [t for t in reals if t.get("delta")]
    assert [t["version"] for t in served] == ["476"] or not any(t["version"] == "476" for t in reals)
    for t in served:
        expected = json.load(open(t["delta"]["expected"]))["tables"]
        rows = realtrino.statement(
            t["url"], "SELECT table_schema || '.' || table_name FROM delta.information_schema.tables "
                      "WHERE table_schema <> 'information_schema'")["rows"]
        assert set(expected) | set(t["delta"]["trino_written"]) <= {r[0] for r in rows}
        for name, facts in expected.items():
            schema, table = name.split(".")
            page = realtrino.statement(t["url"], f'SELECT count(*), max(version) FROM delta.{schema}."{table}$history"')
            assert page["rows"] == [[facts["version"] + 1, facts["version"]]], name
            page = realtrino.statement(t["url"], f'SELECT DISTINCT "$path" FROM delta.{schema}.{table} LIMIT 1')
            assert page["rows"][0][0].startswith(f"s3://{t['delta']['s3']['bucket']}/warehouse/{schema}/{table}/")
        ops = realtrino.statement(t["url"], 'SELECT operation FROM delta.sales."returns$history" ORDER BY version')
        ops = [r[0] for r in ops["rows"]]
        assert ops[0] == "CREATE TABLE" and "OPTIMIZE" in ops and ops[-1] in ("DELETE", "MERGE"), ops
        props = dict(realtrino.statement(t["url"], 'SELECT key, value FROM delta.sales."returns$properties"')["rows"])
        assert props.get("delta.enableDeletionVectors") == "true", props
