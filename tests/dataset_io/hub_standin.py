"""A stand-in for the Hugging Face Hub's upload API on 127.0.0.1, for tests: the calls huggingface_hub's
`create_repo` and `upload_folder` make when Xet is off (its documented HF_HUB_DISABLE_XET), with the paths
and payloads of the Hub's HTTP API:

- POST /api/repos/create {"name", "organization", "type", "visibility"}: 200 {"url"}; 409 (with the url)
  when it exists;
- POST /api/validate-yaml {"content", "repoType"}: the README's YAML front matter, 400 {"errors": [...]}
  when it is not a mapping or a `configs` entry lacks its name or data files;
- POST /api/datasets/{owner}/{name}/preupload/{revision} {"files": [{"path", "size", "sample"}]}: which
  files go through Git LFS ("lfs": binary or over 10 MB, as the Hub's default .gitattributes) and which
  are sent in the commit ("regular");
- POST /datasets/{owner}/{name}.git/info/lfs/objects/batch (the Git LFS batch API, "basic" transfer): an
  upload and a verify action per object not stored yet;
- PUT on the upload action: the object's bytes, refused unless their sha256 is the object id; as on the Hub
  (a presigned storage URL), the URL carries its own signature and the call no Authorization header;
- POST on the verify action {"oid", "size"};
- POST /api/datasets/{owner}/{name}/commit/{revision}, NDJSON: a "header" line, then "file" (base64) and
  "lfsFile" lines; refused when a pointer names an object never uploaded, as the Hub refuses such a push.

Every call needs `Authorization: Bearer <token>` with a token that can write; a name the Hub refuses
(its rules: letters, digits, '-', '_', '.', no '--' or '..', at most 96 characters) gets 400. Errors have
the Hub's shape ({"error": message}, with X-Error-Code where the Hub sends one). There is no Xet: a client
that tries it finds no Xet endpoint and fails loudly.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import yaml

from tests.standin_server import LocalServer

LFS_ABOVE = 10 * 1024 * 1024
REPO_PART = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9][A-Za-z0-9._-]{0,94}[A-Za-z0-9]$|^[A-Za-z0-9]$")
BINARY_SUFFIXES = (".parquet", ".zip", ".arrow", ".bin")


class Refused(Exception):
    def __init__(self, status: int, message: str, code: str = "", **extra):
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra


@dataclass
class Repository:
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)


class HubStandIn(LocalServer):
    def __init__(self, token: str = "hf_standin_write"):
        self.token = token
        self.repos: dict[str, Repository] = {}
        self.objects: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        path = handler.path.split("?")[0]
        with self._lock:
            self.calls.append((handler.command, path))
        try:
            if handler.command == "PUT":
                if handler.path.split("?", 1)[-1] != f"signature={self._signature(path)}":
                    raise Refused(403, "the upload URL's signature does not match")
            elif handler.headers.get("Authorization", "") != f"Bearer {self.token}":
                raise Refused(401, "Invalid credentials in Authorization header")
            with self._lock:
                status, answer = self._route(handler.command, path, body)
        except Refused as refusal:
            status, answer = refusal.status, {"error": refusal.message, **refusal.extra}
            code = refusal.code
        else:
            code = ""
        data = json.dumps(answer).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        if code:
            handler.send_header("X-Error-Code", code)
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, method: str, path: str, body: bytes):
        if (method, path) == ("POST", "/api/repos/create"):
            return self._create(_json(body))
        if (method, path) == ("POST", "/api/validate-yaml"):
            return self._validate_yaml(_json(body))
        if match := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/([^/]+)", path):
            return self._preupload(self._repo(match[1]), _json(body))
        if match := re.fullmatch(r"/datasets/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path):
            return self._batch(match[1], _json(body))
        if method == "PUT" and (match := re.fullmatch(r"/_lfs/([0-9a-f]{64})", path)):
            return self._put_object(match[1], body)
        if method == "POST" and (match := re.fullmatch(r"/_lfs/([0-9a-f]{64})/verify", path)):
            return self._verify(match[1], _json(body))
        if method == "POST" and (match := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/([^/]+)", path)):
            return self._commit(match[1], body)
        raise Refused(404, f"no route {method} {path} on this stand-in (there is no Xet here)")

    def _repo(self, repo_id: str) -> Repository:
        if repo_id not in self.repos:
            raise Refused(404, "Repository not found", "RepoNotFound")
        return self.repos[repo_id]

    def _create(self, payload: dict):
        name, owner = payload.get("name"), payload.get("organization")
        if payload.get("type") != "dataset":
            raise Refused(400, "this stand-in holds dataset repositories only")
        if not isinstance(name, str) or not REPO_PART.match(name) or (owner and not REPO_PART.match(owner)):
            raise Refused(400, f"Invalid repo name: {owner}/{name}")
        repo_id = f"{owner}/{name}" if owner else f"standin-user/{name}"
        if repo_id in self.repos:
            raise Refused(409, "You already created this dataset repo", url=f"{self.url}/datasets/{repo_id}")
        self.repos[repo_id] = Repository(private=payload.get("visibility", "public") != "public")
        return 200, {"url": f"{self.url}/datasets/{repo_id}"}

    def _validate_yaml(self, payload: dict):
        content = payload.get("content", "")
        errors = []
        if content.startswith("---\n"):
            try:
                metadata = yaml.safe_load(content.split("---\n")[1])
            except yaml.YAMLError as exc:
                metadata, errors = None, [{"message": f"YAML: {exc}"}]
            if not errors and not isinstance(metadata, dict):
                errors.append({"message": "the metadata must be a mapping"})
            for config in (metadata or {}).get("configs", []) if not errors else []:
                if not isinstance(config, dict) or not config.get("config_name") or not config.get("data_files"):
                    errors.append({"message": f'"configs" entry {config!r} needs config_name and data_files'})
        return (400, {"errors": errors}) if errors else (200, {"warnings": []})

    def _preupload(self, repo: Repository, payload: dict):
        files = payload.get("files")
        if not isinstance(files, list) or not files:
            raise Refused(400, "files: a list of {path, size, sample} is needed")
        answer = []
        for file in files:
            if not {"path", "size", "sample"} <= set(file):
                raise Refused(400, "each file needs path, size and sample")
            sample = base64.b64decode(file["sample"])
            binary = b"\0" in sample or file["path"].endswith(BINARY_SUFFIXES)
            mode = "lfs" if binary or file["size"] > LFS_ABOVE else "regular"
            answer.append({"path": file["path"], "uploadMode": mode, "shouldIgnore": False, "oid": None})
        return 200, {"files": answer}

    def _batch(self, repo_id: str, payload: dict):
        self._repo(repo_id)
        if payload.get("operation") != "upload" or "basic" not in payload.get("transfers", []):
            raise Refused(400, "only uploads with the basic transfer are served here")
        objects = []
        for item in payload.get("objects", []):
            oid, size = item.get("oid"), item.get("size")
            if not (isinstance(oid, str) and re.fullmatch(r"[0-9a-f]{64}", oid) and isinstance(size, int)):
                raise Refused(422, f"bad object {item!r}")
            entry: dict = {"oid": oid, "size": size}
            if oid not in self.objects:
                entry["actions"] = {
                    "upload": {
                        "href": f"{self.url}/_lfs/{oid}?signature={self._signature(f'/_lfs/{oid}')}",
                        "header": {},
                    },
                    "verify": {"href": f"{self.url}/_lfs/{oid}/verify"},
                }
            objects.append(entry)
        return 200, {"transfer": "basic", "objects": objects}

    def _signature(self, path: str) -> str:
        return hmac.new(self.token.encode(), path.encode(), hashlib.sha256).hexdigest()

    def _put_object(self, oid: str, body: bytes):
        if hashlib.sha256(body).hexdigest() != oid:
            raise Refused(400, "the object's content does not match its sha256")
        self.objects[oid] = body
        return 200, {}

    def _verify(self, oid: str, payload: dict):
        if oid not in self.objects or payload.get("oid") != oid or payload.get("size") != len(self.objects[oid]):
            raise Refused(404, "object not found or of another size")
        return 200, {}

    def _commit(self, repo_id: str, body: bytes):
        repo = self._repo(repo_id)
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header" or not lines[0]["value"].get("summary"):
            raise Refused(400, "a commit starts with a header line with a summary")
        added = {}
        for line in lines[1:]:
            value = line.get("value", {})
            path = value.get("path", "")
            if not path or path.startswith("/") or ".." in path.split("/"):
                raise Refused(400, f"bad path {path!r}")
            if line.get("key") == "file":
                if value.get("encoding") != "base64":
                    raise Refused(400, "a file's content is sent base64-encoded")
                added[path] = base64.b64decode(value["content"])
            elif line.get("key") == "lfsFile":
                if value.get("oid") not in self.objects:
                    raise Refused(
                        400,
                        f"Your push was rejected because an LFS pointer pointed to a file that does not exist: {path}",
                    )
                added[path] = self.objects[value["oid"]]
            else:
                raise Refused(400, f"unexpected commit line {line.get('key')!r}")
        repo.files.update(added)
        oid = hashlib.sha1(body).hexdigest()
        repo.commits.append(oid)
        return 200, {
            "commitUrl": f"{self.url}/datasets/{repo_id}/commit/{oid}",
            "commitOid": oid,
            "pullRequestUrl": None,
        }


def _json(body: bytes):
    try:
        return json.loads(body or b"{}")
    except ValueError:
        raise Refused(400, "the body is not JSON") from None
