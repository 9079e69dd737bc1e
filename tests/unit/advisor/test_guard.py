"""The emission guard (omp §10.7; acceptance items 63–64)."""

from __future__ import annotations

from memento.advisor.guard import NOISE_PHRASES, EmissionGuard, normalize_note


def test_item_63_noise_dedupe_and_one_note_per_update() -> None:
    guard = EmissionGuard()
    assert guard.accept("Stop.") is False
    assert guard.accept("Move retries into the queue.") is True
    assert guard.accept("move retries into the queue") is False
    assert guard.accept("Another issue") is False
    guard.begin_update()
    assert guard.accept("Another issue") is True


def test_item_64_rejected_calls_do_not_use_the_slot() -> None:
    guard = EmissionGuard()
    assert guard.accept("Move retries into the queue.")
    guard.begin_update()
    assert guard.accept("LGTM!") is False
    assert guard.accept("  MOVE retries — into the queue  ") is False
    assert guard.accept("Missing test for the retry path") is True


def test_normalisation() -> None:
    assert normalize_note("  Ｓtop!!  ") == "stop"
    assert normalize_note("No-issues; continue.") == "no issues continue"
    assert normalize_note("Über_große   Datei") == "über große datei"
    assert all(normalize_note(phrase) == phrase for phrase in NOISE_PHRASES)


def test_every_noise_phrase_is_dropped_in_any_case_and_punctuation() -> None:
    guard = EmissionGuard(max_per_update=100)
    for phrase in NOISE_PHRASES:
        assert guard.accept(phrase.upper() + ".") is False, phrase
        assert guard.accept(f"  {phrase.title()}!  ") is False, phrase


def test_empty_notes_are_rejected() -> None:
    guard = EmissionGuard()
    assert guard.accept("") is False
    assert guard.accept(" ...!? ") is False
    assert guard.accept("A real note")


def test_a_strictly_more_severe_repeat_is_admitted() -> None:
    guard = EmissionGuard()
    assert guard.accept("Tests are skipped", "nit")
    guard.begin_update()
    assert guard.accept("tests are skipped", "nit") is False
    assert guard.accept("Tests are skipped!", "concern") is True
    guard.begin_update()
    assert guard.accept("tests are skipped", "concern") is False
    assert guard.accept("tests are skipped", "nit") is False
    assert guard.accept("tests are skipped", "blocker") is True


def test_a_blocker_is_exempt_from_the_budget() -> None:
    guard = EmissionGuard()
    assert guard.accept("first point", "concern")
    assert guard.accept("second point", "concern") is False
    assert guard.accept("this deletes the database", "blocker") is True
    assert guard.accept("third point", "nit") is False


def test_budget_is_configurable() -> None:
    guard = EmissionGuard(max_per_update=2)
    assert guard.accept("one")
    assert guard.accept("two")
    assert guard.accept("three") is False


def test_reset_forgets_everything() -> None:
    guard = EmissionGuard()
    assert guard.accept("Move retries into the queue.")
    guard.block("Never again")
    guard.reset()
    assert guard.accept("Move retries into the queue.")
    guard.begin_update()
    assert guard.accept("never again")


def test_blocked_notes_stay_out_even_when_more_severe() -> None:
    guard = EmissionGuard()
    guard.block("Use the queue")
    assert guard.accept("use the queue", "blocker") is False


def test_history_is_fifo_bounded() -> None:
    guard = EmissionGuard(max_per_update=10, capacity=3)
    for note in ("a1", "a2", "a3", "a4"):
        assert guard.accept(note)
    guard.begin_update()
    assert guard.accept("a1") is True  # evicted, so new again
    assert guard.accept("a4") is False


def test_a_spam_log_yields_at_most_one_note_per_update() -> None:
    """omp #3520: 309 calls in one update, 114 of them "Stop." and many rephrasings."""
    guard = EmissionGuard()
    calls = ["Stop."] * 114 + ["No further input needed."] * 60 + ["LGTM"] * 35
    calls += [f"Consider refactoring step {i}" for i in range(100)]
    accepted = [c for c in calls if guard.accept(c)]
    assert accepted == ["Consider refactoring step 0"]
