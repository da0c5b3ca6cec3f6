"""flopsreg.plugins.testing: the plugin authors' mask checker finds mismatches and passes matches."""

import pytest
from oracles import causal_mask, pairs, sliding_window_mask

from flopsreg.patterns.full_causal import FULL_CAUSAL
from flopsreg.patterns.sliding_window import SLIDING_WINDOW
from flopsreg.plugins.testing import check_mask_pattern, count_pairs


def test_count_pairs_agrees_with_the_boolean_mask_oracles():
    for s in range(1, 20):
        assert count_pairs(lambda q, k, p: k <= q, s, {}) == pairs(causal_mask(s))
        for w in range(1, s + 2):
            assert count_pairs(lambda q, k, p: k <= q and q - k < p["w"], s, {"w": w}) == pairs(
                sliding_window_mask(s, w)
            )


def test_a_wrong_mask_description_is_reported_with_where_it_differs():
    with pytest.raises(AssertionError, match=r"sliding_window: 1 pairs at seq_len=1, \{'window': 1\}; the mask has 0"):
        check_mask_pattern(SLIDING_WINDOW, lambda q, k, p: k < q, params=[{"window": 1}])


def test_only_mask_patterns_can_be_checked():
    from flopsreg.patterns.attention_core import ATTENTION_CORE

    with pytest.raises(ValueError, match="produces 'flops', not pairs"):
        check_mask_pattern(ATTENTION_CORE, lambda q, k, p: True, params=[{}])


def test_a_right_description_passes():
    check_mask_pattern(FULL_CAUSAL, lambda q, k, p: k <= q, params=[{}], max_len=30)
