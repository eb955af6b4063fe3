#pragma once
// A small Gaussian process for model-based search on encoded configurations (points of the unit
// cube, CompiledSpace::encode): a Matérn-5/2 kernel with one length scale, observations
// standardized, the length scale and the noise chosen by marginal likelihood over a small grid.
//
// Sizes here are tuning-sized (up to a few hundred observations): a dense Cholesky factor, refit
// in full; choosing the hyper-parameters costs one factorization per grid point, so callers refit
// them only now and then (fit(..., reuse_hyper = true) keeps the last ones).

#include <vector>

#include <Eigen/Dense>

namespace slapo::tuner {

class GaussianProcess {
 public:
  // x: n × d, y: n. REQUIRES: n ≥ 1.
  void fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, bool reuse_hyper = false);
  // Posterior mean and variance (in y's units) at each row of `x` (m × d).
  void predict(const Eigen::MatrixXd& x, Eigen::VectorXd* mean, Eigen::VectorXd* variance) const;

  double length_scale() const { return length_; }
  double noise() const { return noise_; }
  bool fitted() const { return n_ > 0; }

 private:
  Eigen::MatrixXd kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, double length) const;
  // Factors K + noise·I for the standardized targets; returns the log marginal likelihood.
  double factor(double length, double noise);

  Eigen::MatrixXd x_;
  Eigen::VectorXd z_;  // standardized targets
  double y_mean_ = 0, y_scale_ = 1;
  double length_ = 0.3, noise_ = 1e-3;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;  // (K + noise·I)⁻¹ z
  long n_ = 0;
};

// The standard normal density and distribution function.
double normal_pdf(double z);
double normal_cdf(double z);

}  // namespace slapo::tuner
