package framework

// DefaultNormalizeScore scales scores to [0, maxPriority] by the highest
// score; with reverse set, higher raw scores end lower (kube-scheduler's
// helper.DefaultNormalizeScore).
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) *Status {
	var maxCount int64
	for i := range scores {
		if scores[i].Score > maxCount {
			maxCount = scores[i].Score
		}
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		score := scores[i].Score
		score = maxPriority * score / maxCount
		if reverse {
			score = maxPriority - score
		}
		scores[i].Score = score
	}
	return nil
}
