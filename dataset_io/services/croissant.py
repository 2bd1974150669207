"""croissant.json: the bundle described as Croissant 1.0 (MLCommons' JSON-LD vocabulary for ML datasets,
https://mlcommons.org/croissant/): every file with its SHA-256, and one record set per format whose fields
are the columns of its table, typed as the bundle's table pass found them and described by the format's
field docs. A record set reads the format's Parquet copy where there is one, else its text file."""

from __future__ import annotations

from dataset_io.formats import FORMATS

CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
CONTEXT = {  # Croissant 1.0's JSON-LD context, as the specification gives it
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
ENCODINGS = {"csv": "text/csv", "jsonl": "application/jsonlines", "parquet": "application/x-parquet"}
ENCODINGS |= {"json": "application/json", "md": "text/markdown"}
# A column's Croissant type from its Arrow type; nested values and JSON text are read as text.
DATA_TYPES = {"int64": "sc:Integer", "double": "sc:Float", "bool": "sc:Boolean", "string": "sc:Text"}


def croissant(statement: dict, card, digests: dict[str, dict]) -> dict:
    """The Croissant document; digests: {file name in the bundle: {"sha256", "bytes"}} for every file."""
    study = statement["study"]
    document = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": card.pretty_name or study["title"],
        "description": card.description or f"{study['title']}: a study of {study['task']} made with NLI Studio.",
        "url": f"https://huggingface.co/datasets/{study['slug']}",  # where the card says to publish it; any URL
        "datePublished": study["statement_written_at"],
        "license": _license(card),
        "version": "1.0.0",
        "distribution": [
            {
                "@type": "cr:FileObject",
                "@id": name,
                "name": name,
                "contentUrl": name,
                "contentSize": f"{digest['bytes']} B",
                "encodingFormat": ENCODINGS[name.rsplit(".", 1)[1]],
                "sha256": digest["sha256"],
            }
            for name, digest in digests.items()
        ],
        "recordSet": [_record_set(file) for file in statement["files"] if file["rows"]],
    }
    if card.citation:
        document["citeAs"] = card.citation
    return document


def _license(card) -> str:
    if card.spdx_license:
        return f"https://spdx.org/licenses/{card.spdx_license}.html"
    return card.license or "unknown"


def _record_set(file: dict) -> dict:
    source = file["parquet"] or file["name"]
    json_lines = source.endswith(".jsonl")
    return {
        "@type": "cr:RecordSet",
        "@id": file["format"],
        "name": file["format"],
        "description": f"{file['title']} ({source}): {FORMATS[file['format']].summary}.",
        "field": [
            {
                "@type": "cr:Field",
                "@id": f"{file['format']}/{column['name']}",
                "name": column["name"],
                "description": _meaning(file["fields"], column["name"]),
                "dataType": DATA_TYPES.get(column["type"], "sc:Text"),
                "source": {
                    "fileObject": {"@id": source},
                    "extract": {"jsonPath": f"$.{column['name']}"} if json_lines else {"column": column["name"]},
                },
            }
            for column in file["columns"]
        ],
    }


def _meaning(fields: list[dict], column: str) -> str:
    """What the format's field docs say of a column (a doc may name several fields, or a column's parts:
    nli_studio.item)."""
    said = [
        f"{field['name']}: {field['meaning']}" if "." in field["name"] or "[" in field["name"] else field["meaning"]
        for field in fields
        if any(name.strip().split(".")[0].split("[")[0] == column for name in field["name"].split(","))
    ]
    return " ".join(said) or "A field the imported file carried beyond the format's own."
