"""The exceptions and what may be shown of them (errors.py): our own messages never
quote an original, so they are shown; anything else only by its type."""

from __future__ import annotations

import logging

import pytest

from disguiselib import errors


@pytest.mark.parametrize(
    "cls", [errors.MappingError, errors.MaskError, errors.NeverForward, errors.StreamError, errors.ScopeError,
            errors.StateError, errors.LeakError],
)  # fmt: skip
def test_our_exceptions_are_shown_with_their_message(cls) -> None:
    e = cls("names the rule, never the value")
    assert isinstance(e, errors.DisguiseError)
    assert errors.reason(e) == "names the rule, never the value"


def test_never_forward_is_a_mask_error() -> None:
    assert issubclass(errors.NeverForward, errors.MaskError)


def test_any_other_exception_is_shown_by_its_type_only() -> None:
    assert errors.reason(KeyError("bob@corp.example.com")) == "internal error (KeyError)"
    assert errors.reason(ValueError("Acme Corp")) == "internal error (ValueError)"


def test_log_internal_logs_the_type_at_error_and_the_traceback_at_debug(caplog) -> None:
    log = logging.getLogger("disguise.test")
    try:
        raise KeyError("bob@corp.example.com")
    except KeyError as e:
        with caplog.at_level(logging.ERROR, logger="disguise.test"):
            errors.log_internal(log, "masking", e)
        assert caplog.text.strip().endswith("disguise: masking: internal error (KeyError)")
        assert "bob@corp" not in caplog.text
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="disguise.test"):
            errors.log_internal(log, "masking", e)
        assert "Traceback" in caplog.text  # only at debug level


def test_a_quoting_mask_error_never_shows_its_quote_by_itself() -> None:
    e = errors.QuotingMaskError("model family {} is unknown", "acme.model", "acme.model-v1")
    assert isinstance(e, errors.MaskError)
    assert str(e) == errors.reason(e) == "model family <not shown> is unknown"
    assert e.naming(lambda t: True) == "model family 'acme.model' is unknown"
    assert e.naming(lambda t: "acme" not in t) == "model family <original> is unknown"
    # the quote clean but what it came from not: withheld all the same
    assert e.naming(lambda t: t != "acme.model-v1") == "model family <original> is unknown"


def test_a_quoting_mask_error_survives_the_worker_boundary() -> None:
    import pickle

    e = pickle.loads(pickle.dumps(errors.QuotingMaskError("family {} unknown", "x.y", "x.y-v1")))
    assert (e.template, e.quoted, e.within, str(e)) == ("family {} unknown", "x.y", "x.y-v1", "family <not shown> unknown")


def test_unquoted_withholds_what_a_third_party_message_quotes() -> None:
    """G4: PyYAML's "found undefined alias 'Zenith'" quoted the file's text."""
    from disguiselib.errors import unquoted

    assert unquoted("found undefined alias 'Zenith'") == "found undefined alias <not shown>"
    assert unquoted('bad character in group name "Zen ith" at position 4') == (
        "bad character in group name <not shown> at position 4"
    )
    assert unquoted("found unknown escape character 'q'") == "found unknown escape character 'q'"  # one: kept
    assert unquoted("expected ',' or ']', but got '<scalar>'").endswith("but got <not shown>")
