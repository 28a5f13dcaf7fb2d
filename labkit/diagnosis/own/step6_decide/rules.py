"""The setup triage's decision, H3 -> H2 -> H1, over two seeds that must agree.

H3  the learner's reported values against honest recomputations of the raw losses
    (`logcount`: a sliding-window mean is honest; a count off by one is named), named by the
    candidate loggers that rebuild the reports exactly (`rebuild`)
H2  non-finite inputs that reach the loss; constant or repeated inputs; constant labels
H2  a feature that is the label on every row (`features`)
H1  frozen parameters that stop the model learning (`frozen`); a tensor the loss depends on,
    found by walking its autograd graph, that gets gradients and is never stepped (`leaves`);
    layers whose units never fire or whose relative update is orders of magnitude below the
    others' (`norms`): both fool the label-shuffle control below, as a model that cannot learn
H1  the loss path, read here because a broken loss fools the control below; a loss below
    the floor of the loss it is (`lossrange`: a sign flipped, nll_loss on logits)
    (`losspath`: broadcast, probabilities where logits or log-probabilities belong or a
    quantile residual flipped (`callargs`), zero gradients, unpaired predictions, a floor
    near chance (label smoothing 0.9); as H2, a causal model's own inputs as its labels);
    padding counted in a sequence loss (`padding`); token targets scored at an offset other
    than the next token's, measured through the loss call (`offset`: a double shift); an L2/L1
    penalty in loss_fn that holds the data term at twice a run's without it (`penalty`)
H2  a plain loop's model far worse on its whole epoch than the same loop's on rows shuffled
    across the epoch (`order`: batches sorted by label), read first: an unmixed order fools
    the label-shuffle control, as no signal; so does a model that mixes a batch's examples
    (`examples`, H1)
H2  the label-shuffle control (no signal: labels decorrelated, inputs indistinguishable
    from noise, one feature's scale swamping the others, rows normalised one by one beside a
    label no reference places: `transform`); held-out batches whose loss never improves while
    the training loss falls
H1  the replay of the learner's loop beside plain loops (`flow.h1_rules`), then one
    optimizer setting at a time back to its default (`settings`); behind a divergence or a
    setting, a loss summed over the batch is named as the cause (`lossrange.summed`)
H1  a loop that ends far above a plain loop, or does not learn: the loop audit (`audit`:
    parameters changed outside step(), gradients edited between backward() and step(), updates
    that climb the loss)
H1  a measured gap decides (`gaps`): a loop that ends beyond the seed spread above the plain
    loop convicts the loop (naming an optimizer rebuilt inside it where the replay saw one);
    a plain loop on the model re-initialised by PyTorch's defaults far below the same loop on
    the learner's init convicts the init
H2  before an acquittal: an augmentation that places the setup's own table worse (`transform`);
    a column of integer codes that a one-hot encoding fits at half the loss (`codes`)
--  otherwise: NONE, naming the references the run reached and their numbers; UNKNOWN if the
    run does not learn and no mechanism was measured, or if the seeds disagree (a third seed
    where they agree on the system only, `seeds`).
"""

from __future__ import annotations

import math

from ..step1_capture import setup as proto
from .. import codes, penalty
from ..step5_sign.acquit import beside, checked
from ..step3_h2.data import REPEATED, WHITE, describe_signal, held_out_verdict
from ..step3_h2.data import barely_varying, constant_labels, label_signal, scale_shift, series_order
from .evidence import SeedEvidence
from ...finding import OwnFinding
from ..margins import above, below
from ..step4_h1.audit import audit
from ..step4_h1.losspath import loss_path
from ..step4_h1.lossrange import range_rule, summed
from ..step3_h2 import blank, calls, layout, mask, padid, paired, transform, unseen
from ..step3_h2.offset import offset_rule
from ..step3_h2.order import order_rule
from ..step4_h1.flow import h1_rules
from ..step4_h1.frozen import frozen_rule
from .gaps import loop_gap, noted as _noted, references, spread_margin, summed_rule
from .parts import clip_gap, dropout_gap, first_step_gap, init_first, init_gap
from .evalnoise import eval_random_rule
from .neighbours import loss_blind_rule, places
from .padsides import padsides_rule
from .permuted import widened
from ..step4_h1.leaves import graph_rule, still_outside_rule, still_rule
from ..step3_h2.features import leak_rule
from ..step2_h3.logcount import logger_check
from ..step4_h1.norms import norms_rule
from ..step4_h1.padding import padding_rule
from ..step2_h3.rebuild import explain
from .seeds import settle
from .examples import dropped_rule, mixing_rule, reach_rule
from ..step4_h1.settings import settings_rule

SCALE_RATIO = 1e4  # one feature's spread this many times the median feature's: it swamps them
OWN_LEARNS = 0.75  # the own arm's last fifth below this share of its first loss: it learns
LR_KEYS = ("divergence", "unsettled")  # optimizer findings a summed loss can stand behind


def _unknown(what: str) -> OwnFinding:
    return OwnFinding("UNKNOWN", "unknown", what)


def _h3_one(ev: SeedEvidence) -> OwnFinding | None:
    check = logger_check(ev)
    if check.details["agree"]:
        return None
    key, text = check.details["mechanism"], check.verdict.removeprefix("disagree: ")
    rebuilt = explain(ev.run, ev.rows_per_epoch, key, ev.sizes)  # loggers that rebuild them
    if rebuilt is not None:
        key, text = rebuilt
    return OwnFinding(
        "H3",
        key,
        text,
        arm="logger",
        variable=("logger", "your reported value", "the running mean of loss_raw"),
    )


def _h3(evs) -> OwnFinding | None:
    found = [_h3_one(ev) for ev in evs]
    return settle(evs, found, _h3_one, "H3", "the logger disagrees with the raw loss")


def _h2(evs) -> OwnFinding | None:
    """Checks that need no training: non-finite, constant or repeated inputs; constant labels."""
    inputs = evs[0].inputs
    if inputs["nonfinite_rows"]:
        reaches = [
            not math.isfinite(ev.facts["own_level"]) or ev.facts["nonfinite_at"] is not None
            for ev in evs
        ]
        if all(reaches):
            return OwnFinding(
                "H2",
                "input_nonfinite",
                f"the inputs hold non-finite values (NaN/inf in "
                f"{inputs['nonfinite_rows']} of {inputs['rows']} rows, features "
                f"{inputs.get('nonfinite_features')}): they reach the loss and make it NaN",
                arm="cleaned",
                variable=("inputs", "with NaN/inf", "torch.nan_to_num(inputs)"),
                expect="finite",
            )
    if inputs["constant"]:
        return OwnFinding(
            "H2",
            "constant_inputs",
            f"the inputs are constant: {inputs['identical_share']:.1%} of the {inputs['rows']} "
            "input rows are identical, so they carry no information about the labels",
            arm="shuffled",
            variable=("labels", "as given", "permuted across the epoch"),
            expect="same",
        )
    distinct, rows = inputs.get("distinct_rows"), inputs["rows"]
    if distinct and rows >= 128 and distinct <= REPEATED * rows and not inputs["constant"]:
        return OwnFinding(
            "H2",
            "repeated_rows",
            f"the epoch repeats the same examples: only {distinct} distinct input rows among the "
            f"{rows} the batches hold ({distinct / rows:.1%}), so the batches hold the same input "
            "rows over and over (one batch repeated, a batch index that never advances, or a "
            "reused buffer appended by reference) and the model memorises them instead of "
            "learning the task",
        )
    if constant_labels(evs[0]):  # a placeholder target the loss never reads is no label
        return OwnFinding(
            "H2",
            "constant_labels",
            f"the labels are constant: all {inputs['rows']} examples carry the same label, so "
            "there is nothing to learn but that one class",
            arm="shuffled",
            variable=("labels", "as given", "permuted across the epoch"),
            expect="same",
        )
    found = layout.layout_rule(evs) or mask.mask_rule(evs) or padid.collision_rule(evs)
    found = found or paired.paired_rule(evs) or unseen.unseen_rule(evs)
    return found or padsides_rule(evs)  # ids and labels padded on opposite sides


def _label_signal(evs) -> dict:
    """The label-shuffle control on the learner's own optimizer first when it clearly learns
    (no reference arm to train then); on the plain arm that learns best (`best_arm`) else."""
    if evs[0].inputs.get("labels_constant"):  # past `_h2`: one value the loss never reads
        return {"verdict": "unread", "why": "your loss reads no labels"}

    def on(arm):
        return label_signal([ev.arm(arm) for ev in evs], [ev.shuffled(arm) for ev in evs])

    sig, own = None, evs[0].arm("own")
    if math.isfinite(own.mean) and below(
        "signal.own_learns", own.level(), OWN_LEARNS * abs(own.losses[0])
    ):
        sig = on("own")
        if sig["verdict"] == "signal":
            return sig
    arm = evs[0].best_arm()
    sig = sig if sig is not None and arm == "own" else on(arm)
    if sig["verdict"] == "unclear" and arm == "own":  # too noisy on your optimizer: the
        ref = on("ref")  # reference optimizer is a second, independent reference
        if ref["verdict"] == "none" and "ends" in sig and places(evs):  # three references:
            return sig  # your optimizer's ends and the neighbours both place the targets
        if ref["verdict"] != "unclear":
            return ref
    return widened(evs, sig)  # close on every seed: further permutations decide


def _h2_signal(evs) -> OwnFinding | None:
    inputs = evs[0].inputs
    sig = _label_signal(evs)
    for ev in evs:
        ev.results["signal"] = sig
    if sig["verdict"] == "none":
        white = inputs.get("white_ratio")
        if white is not None and below("inputs.white_ratio", white, WHITE):
            return OwnFinding(
                "H2",
                "noise_inputs",
                "the inputs are drowned in noise: real and shuffled labels train alike, and the "
                "inputs' feature correlations are no stronger than pure noise of this shape gives "
                f"(top eigenvalue {white:.2f}x the noise edge)"
                + (series_order(evs[0].batches) or ""),
                arm="shuffled",
                variable=("labels", "as given", "permuted across the epoch"),
                expect="same",
            )
        ratio = inputs.get("scale_ratio")
        if ratio is not None and not below("inputs.scale_ratio", ratio, SCALE_RATIO, log=True):
            return OwnFinding(
                "H2",
                "feature_scale",
                f"one input feature swamps the others: feature "
                f"{inputs['scale_feature']} varies {ratio:.2g} times more than the median "
                "feature (another unit, or left out of the normalisation), and a plain loop "
                "then trains alike on real and on shuffled labels",
                arm="shuffled",
                variable=("labels", "as given", "permuted across the epoch"),
                expect="same",
            )
        # data re-made per call, or inputs scaled with another scale's stats (rows look alike)
        found = _re_made(evs, ("labels", "inputs"), transform=True) or barely_varying(inputs)
        found = found or loss_blind_rule(evs, sig) or transform.rows_rule(evs, shuffled=True)
        if found is not None:
            return found
        return OwnFinding(
            "H2",
            "labels_decorrelated",
            "the labels are decorrelated from the inputs: a plain loop trains alike on real and "
            "on shuffled labels (no signal), while the inputs themselves are structured",
            arm="shuffled",
            variable=("labels", "as given", "permuted across the epoch"),
            expect="same",
        )
    held = [ev.held_out() for ev in evs]
    if held[0] is not None:
        verdicts = [held_out_verdict(h) for h in held]
        if all(v["verdict"] == "mismatch" for v in verdicts):
            v, ev = verdicts[0], evs[0]
            shift = scale_shift(ev.batches, proto.batches(ev.setup, ev.seed, "val_batches"))
            return OwnFinding(
                "H2",
                "held_out_mismatch",
                (f"{shift}; " if shift else "")
                + f"the held-out batches do not follow the training "
                f"mapping: the training loss falls {v['train'][0]:.3g} -> {v['train'][1]:.3g} "
                f"while the held-out loss never improves on its value at init "
                f"({v['held_out'][0]:.3g}, best {v['held_out'][1]:.3g})",
                arm="held_out_train",
                variable=(
                    "held-out batches",
                    "val_batches",
                    ("a held-out slice of the training batches"),
                ),
                expect="lower",
            )
    return None


def _re_made(evs, parts, transform: bool = False) -> OwnFinding | None:
    """H2: the data that `batches` re-makes on every call (ids, class ids), the first of
    `parts` that differs between two calls on every seed. A random transform of float inputs
    (an augmentation, meant to differ) is named only where the labels carry no signal on the
    inputs as they come (`transform`)."""
    for part in parts:
        shares = calls.re_made(evs, part)
        floats = part == "inputs" and not calls.drift(evs[0])["integer"]
        if shares is None or (floats and not transform):
            continue
        return OwnFinding(
            "H2",
            f"re_made_{part}",
            calls.describe(evs, part, shares),
            arm="own",
            variable=("batches()", "re-made at every call", "one call's epoch, repeated"),
        )
    return None


def _h1(evs) -> OwnFinding | None:
    rule = h1_rules
    found = [rule(ev) for ev in evs]
    if found[0] is None and found[1] is None:  # then one optimizer setting at a time
        rule = settings_rule
        found = [rule(ev) for ev in evs]
    finding = settle(evs, found, rule, "H1", "the replay finds a mechanism")
    finding = init_first(evs, finding)  # a divergence the default init does not share
    if finding is not None and finding.system == "H1":
        finding = summed_rule(evs, finding)  # a gradient summed by hand is closer to the cause
    if (
        finding is not None
        and finding.system == "H1"
        and (finding.key in LR_KEYS or finding.key.startswith("setting:"))
    ):
        return summed(evs, finding)  # a summed loss is closer to the cause than the LR or a setting
    return finding


def _healthy_or_unknown(evs) -> OwnFinding:
    own = [ev.facts["own_level"] for ev in evs]
    plain = [ev.arm("own").level() for ev in evs]
    start = evs[0].run.table["loss_raw"][0]
    margin = spread_margin(plain, start)
    behind = all(
        above("healthy.own_above_plain", o, p + margin, seed=ev.seed)
        for o, p, ev in zip(own, plain, evs)
    )
    stuck = all(
        above("healthy.stuck", o, 0.9 * abs(start), seed=ev.seed) for o, ev in zip(own, evs)
    )
    if behind or stuck:  # the run fails: the loop audit names what the loop does differently
        found = settle(
            evs, [audit(ev) for ev in evs], audit, "H1", "the loop audit finds a mechanism"
        )
        if found is not None and found.system == "H1":
            return found
    if behind:  # a measured gap decides: the data each call re-makes, else the loop
        return _re_made(evs, ("inputs", "labels")) or summed_rule(evs, loop_gap(evs, own, plain))
    found = clip_gap(evs, own) or init_gap(evs, plain) or dropout_gap(evs)
    found = found or eval_random_rule(evs) or first_step_gap(evs)  # eval noise, step 0 read
    found = found or blank.blank_rule(evs) or blank.scale_rule(evs)  # what inputs do not show
    found = found or transform.table_rule(evs) or transform.rows_rule(evs)  # a transform
    found = found or codes.codes_rule(evs)  # integer codes that one-hot fits far better
    if found is not None:
        return found
    refs = [ev.arm("ref").level() for ev in evs] if stuck else []
    if stuck and all(
        below("healthy.ref_learns", r, 0.8 * abs(start), seed=ev.seed) for r, ev in zip(refs, evs)
    ):
        return _unknown(
            f"your run does not learn (loss {start:.3g} -> {own[0]:.3g} / {own[1]:.3g}) while "
            f"a plain loop with a reference optimizer, Adam(lr=1e-3), reaches {refs[0]:.3g} / "
            f"{refs[1]:.3g}; the replay measured no single cause, so check the optimizer's "
            "settings one at a time"
        )
    sig = evs[0].results.get("signal", {})
    if sig.get("verdict") not in ("signal", "unread") and "ends" not in sig:  # ends apart: acquit
        return _unknown(
            f"no defect was measured, but the label signal is unclear: {describe_signal(sig)}"
        )
    line = checked(evs, plain[0]) + "; " + references(evs, plain)
    return OwnFinding("NONE", "healthy", beside(evs, line))


def decide(evs: list[SeedEvidence]) -> OwnFinding:
    """The first system whose evidence holds on both seeds, in the order H3, H2, H1.

    The loss path (`losspath`) is read before the label-shuffle control: a loss that
    compares every prediction with every label makes real and shuffled labels train alike,
    which would otherwise read as data without signal."""
    for rule in (
        _h3,
        _h2,
        leak_rule,
        frozen_rule,
        graph_rule,
        still_outside_rule,
        norms_rule,
        loss_path,
        offset_rule,
        range_rule,
        penalty.penalty_rule,
        reach_rule,
        padding_rule,
        dropped_rule,
        order_rule,
        mixing_rule,
        _h2_signal,
        _h1,
        still_rule,
    ):
        found = rule(evs)
        if found is not None:
            return _noted(found, evs)
    return _noted(_healthy_or_unknown(evs), evs)
