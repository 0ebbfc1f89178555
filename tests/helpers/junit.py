"""JUnit files held to the schema vendored beside the tests (junit-10.xsd), and read back as tuples."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

XSD = Path(__file__).with_name("junit-10.xsd")


def junit(path: Path) -> ET.Element:
    """`path` parsed, valid against the vendored schema, every count what its cases say; the root."""
    import xmlschema

    xmlschema.XMLSchema(str(XSD)).validate(str(path))
    root = ET.parse(path).getroot()
    suites = root.findall("testsuite")
    assert int(root.get("tests", "")) == sum(int(s.get("tests", "")) for s in suites)
    assert int(root.get("failures", "")) == sum(int(s.get("failures", "")) for s in suites)
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "")) == len(cases)
        assert int(suite.get("failures", "")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("skipped", "")) == sum(c.find("skipped") is not None for c in cases)
        assert suite.get("errors") == "0"
    return root


def cases(root: ET.Element) -> list[tuple[str, str, str]]:
    """(classname, name, passed/failure/skipped) of every test case, in order."""
    return [(c.get("classname", ""), c.get("name", ""),
             next((x.tag for x in c if x.tag in ("failure", "skipped")), "passed")) for c in root.iter("testcase")]


def properties(root: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in root.iter("property")}
