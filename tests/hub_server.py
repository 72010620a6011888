"""A local stand-in for the few Hugging Face Hub endpoints that pushing and loading a model use.

The real Hub cannot be reached from the test machines, so `tests/test_hub.py` points the real client code
(`huggingface_hub`, `transformers`) at this server with ``HF_ENDPOINT=http://127.0.0.1:PORT`` and
``HF_HUB_DISABLE_XET=1``. Everything up to the wire is the real client; only the server is a stand-in.

It serves loopback only, on a free port, keeps repositories in memory and stops when the test fixture ends::

    with LocalHub() as hub:
        os.environ["HF_ENDPOINT"] = hub.endpoint   # for a subprocess: huggingface_hub reads it at import time
        ...
        hub.files("org/name")                      # {path: bytes} at the head of main

Endpoints (model repositories only; the shapes follow `huggingface_hub` 2.4's client code, see the handlers):

* ``POST /api/repos/create`` – create a repo (409 with its url when it exists, as the Hub answers).
* ``DELETE /api/repos/delete`` – delete a repo.
* ``GET  /api/models/{repo_id}[/revision/{revision}]`` – repo info (``sha``, ``siblings``, ``private``).
* ``GET  /api/models/{repo_id}/tree/{revision}[/{path}]`` – folder listing (``recursive=true`` supported).
* ``POST /api/validate-yaml`` – the README front matter must be a YAML mapping.
* ``GET  /api/agent-harnesses`` – an empty registry (the client fetches it to tag its user agent).
* ``POST /api/models/{repo_id}/preupload/{revision}`` – answers ``uploadMode: "regular"`` for every file, so the
  client sends contents inline (base64) in the commit and never uses LFS or Xet.
* ``POST /api/models/{repo_id}/commit/{revision}`` – NDJSON body: a ``header`` line, then ``file`` (base64),
  ``deletedFile`` and ``deletedFolder`` lines. ``lfsFile`` lines and ``create_pr`` are refused (never needed here).
* ``HEAD|GET /{repo_id}/resolve/{revision}/{path}`` – file metadata (``X-Repo-Commit``, ``ETag`` = git blob sha,
  ``Content-Length``) and contents.

Errors carry the ``X-Error-Code`` header the client maps to its exceptions: ``RepoNotFound``, ``RevisionNotFound``,
``EntryNotFound`` (e.g. transformers probing for ``model.safetensors.index.json`` gets a clean "missing file").
Writes need an ``Authorization: Bearer <token>`` header (any token); private repos need one to be read.
Any other route answers 501 and is recorded in `LocalHub.unhandled`, so a test can assert the client asked for
nothing the stand-in does not implement.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

__all__ = ["HubError", "LocalHub", "Repo", "git_blob_sha"]

REPO = r"(?P<repo>[^/]+/[^/]+)"  # "namespace/name"; the revision segment is URL-quoted with safe="" by the client
ROUTES = [  # (method, pattern, handler name), first match wins
    ("POST", r"/api/repos/create", "create_repo"),
    ("DELETE", r"/api/repos/delete", "delete_repo"),
    ("POST", r"/api/validate-yaml", "validate_yaml"),
    ("GET", r"/api/agent-harnesses", "agent_harnesses"),
    ("GET", rf"/api/models/{REPO}", "repo_info"),
    ("GET", rf"/api/models/{REPO}/revision/(?P<revision>[^/]+)", "repo_info"),
    ("GET", rf"/api/models/{REPO}/tree/(?P<revision>[^/]+)(?:/(?P<path>.*))?", "tree"),
    ("POST", rf"/api/models/{REPO}/preupload/(?P<revision>[^/]+)", "preupload"),
    ("POST", rf"/api/models/{REPO}/commit/(?P<revision>[^/]+)", "commit"),
    ("HEAD", rf"/{REPO}/resolve/(?P<revision>[^/]+)/(?P<path>.+)", "resolve"),
    ("GET", rf"/{REPO}/resolve/(?P<revision>[^/]+)/(?P<path>.+)", "resolve"),
]
GITATTRIBUTES = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n"


def git_blob_sha(content: bytes) -> str:
    """Git's object id of a blob: what the Hub sends as the ETag of a regular (non-LFS) file."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


class HubError(Exception):
    """An error answer: HTTP status, the ``X-Error-Code`` header (if any) and a message."""

    def __init__(self, status: int, message: str, error_code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.error_code, self.headers = status, message, error_code, headers or {}


@dataclass
class Repo:
    """One repository: commits as full snapshots ``{sha: {path: bytes}}`` and branches ``{name: sha}``."""

    repo_id: str
    private: bool = False
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))

    def add_commit(self, branch: str, files: dict[str, bytes], message: str) -> str:
        parent = self.branches.get(branch, "")
        listing = "".join(f"{path}\0{git_blob_sha(data)}\n" for path, data in sorted(files.items()))
        sha = hashlib.sha1(f"{parent}\n{message}\n{len(self.commits)}\n{listing}".encode()).hexdigest()
        self.commits[sha], self.messages[sha], self.branches[branch] = dict(files), message, sha
        return sha

    def resolve(self, revision: str) -> str:
        """Branch name or full commit sha → commit sha (404 RevisionNotFound otherwise)."""
        if revision in self.branches:
            return self.branches[revision]
        if revision in self.commits:
            return revision
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")


class LocalHub:
    """The stand-in server: `start()` / `stop()` (or a ``with`` block); state is inspected between requests."""

    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self.unhandled: list[tuple[str, str]] = []  # requests no route matched (answered 501)
        self.tokens: set[str] = set()  # bearer tokens seen
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "LocalHub":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))  # loopback, free port
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)
            self._server = self._thread = None

    def __enter__(self) -> "LocalHub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ------------------------------------------------------------------ inspection helpers for tests
    def files(self, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        repo = self.repos[repo_id]
        return dict(repo.commits[repo.resolve(revision)])

    def commit_messages(self, repo_id: str) -> list[str]:
        return list(self.repos[repo_id].messages.values())

    # ------------------------------------------------------------------ helpers shared by the handlers
    def _repo(self, repo_id: str, token: str | None, write: bool = False) -> Repo:
        repo = self.repos.get(repo_id)
        if write and token is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        if repo is None or (repo.private and token is None):
            # the Hub answers the same for missing and for private-without-token repos
            raise HubError(404, "Repository not found", "RepoNotFound")
        return repo

    # ------------------------------------------------------------------ handlers: (params, query, body, token)
    # Each returns (status, headers, body) where body is bytes or a JSON-serialisable object.
    def create_repo(self, params, query, body, token):
        if token is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        payload = json.loads(body)
        if payload.get("type", "model") != "model":
            raise HubError(400, "the stand-in only hosts model repositories")
        if not payload.get("organization"):
            raise HubError(400, "the stand-in needs an explicit namespace: use 'namespace/name'")
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"{self.endpoint}/{repo_id}"
        if repo_id in self.repos:
            return 409, {}, {"error": "You already created this model repo", "url": url}
        repo = Repo(repo_id, private=payload.get("visibility") == "private" or bool(payload.get("private")))
        repo.add_commit("main", {".gitattributes": GITATTRIBUTES}, "initial commit")
        self.repos[repo_id] = repo
        return 200, {}, {"url": url, "name": repo_id, "id": repo_id}

    def delete_repo(self, params, query, body, token):
        payload = json.loads(body)
        repo = self._repo(f"{payload.get('organization')}/{payload['name']}", token, write=True)
        del self.repos[repo.repo_id]
        return 200, {}, b""

    def agent_harnesses(self, params, query, body, token):
        """The client fetches this registry (to tag its user agent) once a day; an empty one detects nothing."""
        return 200, {}, {"standardEnvVars": [], "harnesses": {}}

    def validate_yaml(self, params, query, body, token):
        content = json.loads(body).get("content", "")
        match = re.match(r"^---\s*\n(.*?)\n---\s*(?:\n|$)", content, re.DOTALL)
        errors = []
        if match:
            try:
                metadata = yaml.safe_load(match.group(1))
                if metadata is not None and not isinstance(metadata, dict):
                    errors.append("metadata must be a YAML mapping")
            except yaml.YAMLError as error:
                errors.append(f"invalid YAML: {error}")
        if errors:
            return 400, {}, {"errors": [{"message": message} for message in errors], "warnings": []}
        return 200, {}, {"errors": [], "warnings": [] if match else [{"message": "empty or missing yaml metadata"}]}

    def repo_info(self, params, query, body, token):
        repo = self._repo(params["repo"], token)
        sha = repo.resolve(params.get("revision") or "main")
        files = repo.commits[sha]
        return 200, {}, {
            "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24], "id": repo.repo_id, "modelId": repo.repo_id,
            "author": repo.repo_id.split("/")[0], "sha": sha, "private": repo.private, "gated": False,
            "disabled": False, "downloads": 0, "likes": 0, "tags": [], "createdAt": repo.created_at,
            "lastModified": repo.created_at,
            "siblings": [{"rfilename": path, "size": len(data), "blobId": git_blob_sha(data)}
                         for path, data in sorted(files.items())],
        }

    def tree(self, params, query, body, token):
        repo = self._repo(params["repo"], token)
        files = repo.commits[repo.resolve(params["revision"])]
        folder = (params.get("path") or "").strip("/")
        prefix = f"{folder}/" if folder else ""
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        if folder and not any(path.startswith(prefix) for path in files):
            raise HubError(404, f"{folder} does not exist on main", "EntryNotFound")
        entries, folders = [], set()
        for path, data in sorted(files.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix):].split("/")
            for depth in range(1, len(parts) if recursive else min(len(parts), 2)):
                folders.add(prefix + "/".join(parts[:depth]))
            if recursive or len(parts) == 1:
                entries.append({"type": "file", "oid": git_blob_sha(data), "size": len(data), "path": path})
        entries += [{"type": "directory", "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0, "path": f}
                    for f in sorted(folders)]
        return 200, {}, entries

    def preupload(self, params, query, body, token):
        repo = self._repo(params["repo"], token, write=True)
        if query.get("create_pr"):
            raise HubError(400, "the stand-in does not implement pull requests")
        head = repo.commits[repo.resolve(params["revision"])]
        answer = []
        for item in json.loads(body)["files"]:
            existing = head.get(item["path"])
            answer.append({"path": item["path"], "uploadMode": "regular", "shouldIgnore": False,
                           "oid": git_blob_sha(existing) if existing is not None else None})
        return 200, {}, {"files": answer, "commitOid": repo.branches.get(params["revision"])}

    def commit(self, params, query, body, token):
        repo = self._repo(params["repo"], token, write=True)
        if query.get("create_pr"):
            raise HubError(400, "the stand-in does not implement pull requests")
        branch = params["revision"]
        if branch not in repo.branches:
            raise HubError(404, f"Invalid rev id: {branch} (commits go to a branch)", "RevisionNotFound")
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "the first NDJSON line must be the commit header")
        header = lines[0]["value"]
        if header.get("parentCommit") not in (None, repo.branches[branch]):
            raise HubError(412, "parentCommit is not the head of the branch")
        files = dict(repo.commits[repo.branches[branch]])
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                if value.get("encoding", "base64") != "base64":
                    raise HubError(400, f"unsupported encoding {value.get('encoding')!r}")
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                if files.pop(value["path"], None) is None:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                files = {path: data for path, data in files.items() if not path.startswith(prefix)}
            else:  # lfsFile: preupload never answers "lfs", so a conforming client never sends one
                raise HubError(400, f"the stand-in does not implement {key!r} operations")
        sha = repo.add_commit(branch, files, header.get("summary", ""))
        return 200, {}, {"success": True, "commitOid": sha, "commitUrl": f"{self.endpoint}/{repo.repo_id}/commit/{sha}",
                         "hookOutput": ""}

    def resolve(self, params, query, body, token):
        repo = self._repo(params["repo"], token)
        sha = repo.resolve(params["revision"])
        data = repo.commits[sha].get(params["path"])
        if data is None:
            raise HubError(404, "Entry not found", "EntryNotFound", {"X-Repo-Commit": sha})
        headers = {"X-Repo-Commit": sha, "ETag": f'"{git_blob_sha(data)}"', "Content-Type": "application/octet-stream",
                   "Content-Disposition": f'inline; filename="{params["path"].rsplit("/", 1)[-1]}"'}
        return 200, headers, data


def _make_handler(hub: LocalHub) -> type[BaseHTTPRequestHandler]:
    routes = [(method, re.compile(pattern + r"$"), getattr(hub, name)) for method, pattern, name in ROUTES]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive; every answer carries Content-Length

        def log_message(self, format, *args):  # quiet: requests are recorded in hub.requests instead
            pass

        def _read_body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    chunk = self.rfile.read(size)
                    self.rfile.readline()
                    if size == 0:
                        return b"".join(chunks)
                    chunks.append(chunk)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _dispatch(self):
            url = urlsplit(self.path)
            body = self._read_body()
            authorization = self.headers.get("Authorization", "")
            token = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None
            with hub.lock:
                hub.requests.append((self.command, url.path))
                if token:
                    hub.tokens.add(token)
                try:
                    for method, pattern, handler in routes:
                        match = pattern.match(url.path)
                        if match and method == self.command:
                            params = {k: unquote(v) for k, v in match.groupdict().items() if v is not None}
                            status, headers, payload = handler(params, parse_qs(url.query), body, token)
                            break
                    else:
                        hub.unhandled.append((self.command, self.path))
                        raise HubError(501, f"the local Hub stand-in does not implement {self.command} {url.path}")
                except HubError as error:
                    status, payload = error.status, {"error": error.message}
                    headers = {**error.headers, "X-Error-Message": error.message}
                    if error.error_code:
                        headers["X-Error-Code"] = error.error_code
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            if not isinstance(payload, bytes):
                self.send_header("Content-Type", "application/json; charset=utf-8")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _dispatch

    return Handler
