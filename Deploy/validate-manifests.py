#!/usr/bin/env python3
"""Validates the Kubernetes manifests against Kubernetes' own schemas, strictly, without a cluster.

Every object the kustomization lists (or every object in the FILEs given) is checked with
kubernetes-validate in strict mode — a field the schema does not know is an error, as it is for
`kubectl apply` with server-side field validation — against the oldest Kubernetes the manifests
are meant for (MINIMUM_KUBERNETES) and the newest kubernetes-validate ships. Objects of a custom resource (KEDA's
ScaledObject and TriggerAuthentication) are checked the same way against the CRD schemas in
--crds (default Tests/SpliceOperationsTests/KEDA/keda-crds.yaml): unknown fields are errors except
where the CRD preserves them, and metadata is checked as Kubernetes' ObjectMeta. An object of a
kind with no schema at all is an error, not a warning.

Runs with the Python that kubernetes-validate is installed in: Deploy/setup.sh puts it in
/opt/splice-tools (SPLICE_TOOLS), so `/opt/splice-tools/bin/python3 Deploy/validate-manifests.py`.
Exit status 0 when everything is valid; each problem is one line on standard error. The test suite
runs it (DeployFilesTests).
"""
import argparse
import copy
import os
import sys

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError, all_versions, major_minor
from packaging.version import Version

HERE = os.path.dirname(os.path.abspath(__file__))
# The oldest Kubernetes the manifests are meant for: the worker PodDisruptionBudget's
# unhealthyPodEvictionPolicy is on by default from 1.27.
MINIMUM_KUBERNETES = "1.27"
DEFAULT_CRDS = os.path.join(HERE, "..", "Tests", "SpliceOperationsTests", "KEDA", "keda-crds.yaml")


def load_documents(path):
    with open(path) as file:
        return [document for document in yaml.safe_load_all(file) if document]


def kustomization_documents():
    """(file name, document) for every object of every resource the kustomization lists."""
    folder = os.path.join(HERE, "kubernetes")
    kustomization = yaml.safe_load(open(os.path.join(folder, "kustomization.yaml")))
    return [(resource, document) for resource in kustomization.get("resources", [])
            for document in load_documents(os.path.join(folder, resource))]


def strict(schema):
    """The CRD's OpenAPI v3 schema as a JSON schema that refuses unknown fields (as the API server
    does with strict field validation), except where the CRD preserves them."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if not isinstance(node, dict):
            return
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        for key in ("properties",):
            for child in node.get(key, {}).values():
                walk(child)
        for key in ("items", "additionalProperties"):
            walk(node.get(key))
        for key in ("anyOf", "allOf", "oneOf"):
            for child in node.get(key, []):
                walk(child)

    walk(schema)
    return schema


def custom_schemas(path):
    """{(apiVersion, kind): JSON schema} from a file of CustomResourceDefinitions."""
    schemas = {}
    for crd in load_documents(path):
        spec = crd["spec"]
        for version in spec["versions"]:
            key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
            schemas[key] = strict(version["schema"]["openAPIV3Schema"])
    return schemas


def where(error):
    return ".".join(str(part) for part in error.absolute_path) or "(top)"


def validate(label, document, versions, crds, problems):
    key = (document.get("apiVersion"), document.get("kind"))
    if key in crds:
        for error in jsonschema.Draft202012Validator(crds[key]).iter_errors(document):
            problems.append(f"{label}: {where(error)}: {error.message} (KEDA's CRD schema)")
        # The metadata of a custom object is Kubernetes' ObjectMeta: check it as any object's.
        document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": document.get("metadata", {})}
    for version in versions:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except ValidationError as error:
            problems.append(f"{label}: {where(error)}: {error.message} (Kubernetes {version}, strict)")
            return
        except SchemaNotFoundError as error:
            problems.append(f"{label}: {error.message}")
            return


def main(arguments):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="manifests to check (default: the kustomization's resources)")
    parser.add_argument("--crds", default=DEFAULT_CRDS, help="CustomResourceDefinitions for custom kinds")
    options = parser.parse_args(arguments)
    if options.files:
        documents = [(os.path.basename(path), document) for path in options.files for document in load_documents(path)]
    else:
        documents = kustomization_documents()
    # The oldest supported and the newest: each check reads a version's definitions (megabytes of
    # JSON), so every version in between would take minutes.
    shipped = [major_minor(version) for version in all_versions()]
    versions = [version for version in shipped if Version(version) >= Version(MINIMUM_KUBERNETES)]
    versions = sorted({versions[0], versions[-1]}, key=Version)
    crds = custom_schemas(options.crds)
    problems = []
    for name, document in documents:
        label = f"{name}: {document.get('kind')} {document.get('metadata', {}).get('name')}"
        validate(label, document, versions, crds, problems)
    for problem in problems:
        print("validate-manifests: " + problem, file=sys.stderr)
    if not documents:
        print("validate-manifests: no objects to check", file=sys.stderr)
        return 1
    if not problems:
        custom = sum(1 for _, d in documents if (d.get("apiVersion"), d.get("kind")) in crds)
        print(f"validate-manifests: ok ({len(documents)} objects, {custom} of them KEDA's, "
              f"strict, Kubernetes {' and '.join(versions)})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
