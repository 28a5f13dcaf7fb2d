"""Each exercise's mechanism as a structured claim (`_claim.Claim`), with its model answer.

A field is one idea of the exercise's `MECHANISM` rubric, asked as a closed choice in the
exercise's own terms; its wrong choices are the rubric's reversals. `print(CLAIMS["ex_a"])`
shows a form. The model answer is shown once the claim is right, beside the learner's own
explanation, which a person grades (`labkit grade --manual`).
"""

from .._claim import Claim, Field

CLAIMS = {
    "ex_a": Claim(
        {
            "backward_stops": Field(
                ("at the head", "at the detach", "nowhere"),
                "at the detach",
                "backward starts at the loss and follows the graph back; read what detach() "
                "returns (its grad_fn) and where that leaves the backbone.",
            ),
            "backbone_grad": Field(
                ("zero", "None", "small but nonzero"),
                "None",
                "read the backbone's grad_norm columns of the detached run: null (None) and 0 "
                "are stored apart.",
            ),
            "head": Field(
                ("does not learn", "learns"),
                "learns",
                "read the head's update_norm column of the detached run and where the head "
                "sits relative to the detach.",
            ),
            "backbone_weights": Field(
                ("move slowly", "stay at their initial values", "move as in the healthy run"),
                "stay at their initial values",
                "read the update probe's delta_norm of backbone.0.weight after one step.",
            ),
        }
    ),
    "ex_b": Claim(
        {
            "left_out_grad": Field(
                ("None", "computed as usual", "zero"),
                "computed as usual",
                "backward() does not know which optimizer will read .grad: read the gradient "
                "audit's grad column of a left-out tensor.",
            ),
            "step_on_left_out": Field(
                ("updates it", "resets it to zero", "leaves it unchanged"),
                "leaves it unchanged",
                "read the update_norm of the left-out group: step() walks the optimizer's "
                "own parameter list.",
            ),
            "left_out_grad_over_steps": Field(
                ("stays flat", "grows", "shrinks"),
                "grows",
                "read the left-out group's grad_norm over the steps, and which list "
                "zero_grad() clears.",
            ),
            "costlier_to_leave_out": Field(
                ("backbone", "the same", "head"),
                "head",
                "compare the final losses of the two broken runs.",
            ),
        }
    ),
    "ex_c": Claim(
        {
            "first_order_term_grows_like": Field(
                ("lr squared", "lr"),
                "lr",
                "write the second-order Taylor step: the first-order term is the gradient "
                "times the step, and the step is lr times the gradient.",
            ),
            "curvature_term_grows_like": Field(
                ("lr", "lr squared"),
                "lr squared",
                "write the second-order Taylor step: the first-order term is lr * ||g||^2 and "
                "the curvature term carries the step twice.",
            ),
            "wins_at_the_largest_lr": Field(
                ("the first-order term", "the curvature term"),
                "the curvature term",
                "compare lr * g_sq with lr**2 * g_h_g / 2 at lr 30, from the numbers above.",
            ),
            "smallest_lrs": Field(
                ("descend fastest", "barely move", "overflow"),
                "barely move",
                "read the loss of the smallest LRs against ln 10, and the size of one step "
                "against float32's resolution.",
            ),
            "largest_lr_grad_norm": Field(
                ("shrinks", "stays the same", "grows"),
                "grows",
                "read the grad_norm column of the largest LR's run, step by step.",
            ),
        }
    ),
    "ex_d": Claim(
        {
            "online_loss_in_train_mode": Field(
                ("the same as in eval()", "lower: dropout helps", "higher: dropout handicaps"),
                "higher: dropout handicaps",
                "read the four-way table: what dropout does to the units in train() mode.",
            ),
            "eval_switches": Field(
                ("autograd off", "dropout off", "nothing"),
                "dropout off",
                "read the four-way table's 'dropout active' row under eval().",
            ),
            "online_number_averages_over": Field(
                ("the last batch", "the validation set", "the epoch's batches"),
                "the epoch's batches",
                "read how the logger makes loss_reported, and with which weights each of its "
                "batches was scored.",
            ),
            "no_grad_switches": Field(
                ("dropout off", "graph recording off", "nothing"),
                "graph recording off",
                "read the four-way table's 'graph recorded' and 'dropout active' rows under "
                "no_grad().",
            ),
        }
    ),
    "ex_e": Claim(
        {
            "double_shift_predicts": Field(
                ("the next token", "the token before", "the token two ahead"),
                "the token two ahead",
                "shift the labels by hand once, then count the shift the model makes again.",
            ),
            "padding_in_loss": Field(
                ("raises the loss", "lowers the loss", "changes nothing"),
                "lowers the loss",
                "read how hard a PAD target after EOS is to predict, and what it does to the mean.",
            ),
            "all_masked_nan": Field(
                ("an overflow", "0/0: no target counted", "a too high lr"),
                "0/0: no target counted",
                "count the targets the all-masked run's loss averages over.",
            ),
            "prompt_in_loss": Field(
                ("lowers the loss", "changes nothing", "raises the loss"),
                "raises the loss",
                "read how the prompt tokens are generated, and whether any model could predict them.",
            ),
        }
    ),
    "ex_f": Claim(
        {
            "falling_loss_changed": Field(
                ("the decisions", "the probabilities", "nothing"),
                "the probabilities",
                "compare the predicted probabilities of class 0 at the start and the end.",
            ),
            "accuracy": Field(
                ("rises with the loss's fall", "stays at the always-class-0 score"),
                "stays at the always-class-0 score",
                "read the argmax of every validation example at the end.",
            ),
            "mean_driven_by": Field(
                ("the minority class", "the majority class"),
                "the majority class",
                "count each class's share of the examples the mean loss averages.",
            ),
            "exposed_by": Field(
                ("the overall accuracy", "a per-class number", "the loss"),
                "a per-class number",
                "read the confusion matrix and the minority recall.",
            ),
            "minority_recall_at_the_end": Field(
                ("about the majority's", "one", "zero"),
                "zero",
                "read the confusion matrix's row of class 1 at the end.",
            ),
        }
    ),
}
MODEL_ANSWERS = {
    "ex_a": "detach() returns the features with no history, so backward ends there: the "
    "backbone's grad is None, SGD skips it and it keeps its random init; the head, after the "
    "cut, still gets a gradient and learns a readout of fixed random features.",
    "ex_b": "backward fills .grad for every parameter; step() and zero_grad() touch only the "
    "optimizer's list, so a left-out group never moves and its gradient piles up; a frozen "
    "random head is a harder handicap than a frozen random backbone.",
    "ex_c": "one step changes the loss by -lr*||g||^2 + lr^2*gHg/2: at tiny LRs the step is "
    "too small (and float32 rounds part of it away), at moderate LRs the first term wins, at "
    "lr 30 the curvature term wins, each step overshoots and the gradient norm grows.",
    "ex_d": "in train() mode dropout handicaps the network and the online loss is an epoch "
    "mean over older weights; eval() switches dropout off, so train_eval and val agree; "
    "no_grad() only stops the graph from being recorded.",
    "ex_e": "the double shift makes each position predict the token two ahead (a higher "
    "floor); PAD targets after EOS are trivial and pull the mean down; all-masked labels give "
    "0/0 = NaN; random prompt tokens cannot be learned and keep the curve high.",
    "ex_f": "the falling loss moved the probabilities, not the decisions: the majority class "
    "dominates the mean, every argmax stays class 0, and only a per-class number (minority "
    "recall, the confusion matrix) shows that class 1 is never found.",
}
